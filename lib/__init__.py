"""icml25 — ICML 2025, executable.

One module per chapter, named after the method (``icml25.vmf_exploration`` ...), plus
``icml25.common`` (profiles, seeding, devices, plotting, metrics) and ``icml25.kernels``
(CUDA kernels with their CPU references).
"""

__version__ = "0.1.0"
