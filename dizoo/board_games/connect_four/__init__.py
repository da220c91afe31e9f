"""Connect Four on a small board, for self-play."""
