"""The dummy agent: submit the sample submission unchanged."""

import shutil
from pathlib import Path

data = Path("/home/data")
samples = sorted(data.glob("**/sample_submission*.csv")) or sorted(data.glob("**/*ubmission*.csv"))
if not samples:
    raise SystemExit("dummy: no sample submission in /home/data")
shutil.copyfile(samples[0], "/home/submission/submission.csv")
print(f"dummy: copied {samples[0].relative_to(data)} to /home/submission/submission.csv")
