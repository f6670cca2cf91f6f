"""Sweeps as Ray Tune experiments: ``rlconf.sweep.run`` and ``rlconf train -f`` with search
spaces land here."""
