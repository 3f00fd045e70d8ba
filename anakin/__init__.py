"""Anakin runtime (Podracer): acting, JAX-native env steps and learning in one compiled program
over the devices, for the same agents as sebulba/ (docs/anakin.md)."""
