"""The dummy agent: submit the sample submission unchanged."""

import shutil
from pathlib import Path

# /home inside a sandbox; the run's root under the 'local' sandbox (this file is <home>/agent/main.py).
HOME = Path(__file__).parent.parent
data = HOME / "data"
samples = sorted(data.glob("**/sample_submission*.csv")) or sorted(data.glob("**/*ubmission*.csv"))
if not samples:
    raise SystemExit(f"dummy: no sample submission in {data}")
shutil.copyfile(samples[0], HOME / "submission" / "submission.csv")
print(f"dummy: copied {samples[0].relative_to(data)} to {HOME / 'submission' / 'submission.csv'}")
