"""Two-player board games."""
