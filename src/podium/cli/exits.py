"""The CLI's exit statuses (sysexits' EX_SOFTWARE for a bug; 128 + the signal for Ctrl-C and a closed pipe)."""

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_BUG",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_NOTHING_CHECKED",
    "EXIT_USAGE",
]

EXIT_FAILED, EXIT_USAGE, EXIT_BUG, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 1, 2, 70, 130, 141
EXIT_NOTHING_CHECKED = 3  # podium verify found no prepared competition to check
