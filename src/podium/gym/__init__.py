"""placeholder until the gymenv branch is merged."""
