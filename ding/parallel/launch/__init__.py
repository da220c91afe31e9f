"""Starting a parallel run: the local and Slurm launchers, the role processes, and the coordinator's driver."""
