"""Starting a multi-host job: `python -m scripts.launch.local` runs N processes on this machine
(the tests' route); `slurm_gpu.sbatch` is an example for a SLURM cluster."""
