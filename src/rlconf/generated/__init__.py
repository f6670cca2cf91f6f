"""Generated code: the fluent methods of the built-in configs, one module per config module
(``rlconf.algorithms.ppo`` -> ``ppo_fluent``), written from the sections by
``python -m rlconf.fluent_codegen``. Don't edit these modules; change the sections and run it
again (``--check`` reports stale ones)."""
