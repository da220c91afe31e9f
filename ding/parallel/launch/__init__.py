"""Starting a parallel run: the local launcher (``ding -m parallel``), the Slurm launcher, what each role process does
about itself, the CPU placement, and the coordinator's driver both launchers and ``ding -m dist`` share."""
