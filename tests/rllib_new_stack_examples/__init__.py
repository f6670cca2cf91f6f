"""RLlib's Python tuned examples of its new API stack, rewritten here as scripts of our own
with the same settings, the same calls and the same stop criteria, through rlconf's imports
(each file's first line names the RLlib file whose settings it carries).

``tests/test_rllib_new_stack_examples.py`` runs them; ``benchmarks/rllib_new_stack_examples.py``
runs them to their own stop criteria. What an RLlib script imports, and where rlconf has it:

=====================================================================  ==========================
RLlib                                                                  rlconf
=====================================================================  ==========================
``ray.rllib.algorithms.<algo>`` (``PPOConfig``, ``DQNConfig``, ...)   ``rlconf``
``ray.rllib.core.rl_module.default_model_config.DefaultModelConfig``   ``rlconf``
``ray.rllib.utils.test_utils`` (``add_rllib_example_script_args``,     ``rlconf.testing``
``run_rllib_example_script_experiment``)
``ray.rllib.utils.metrics``                                            ``rlconf.metrics``
``ray.rllib.connectors.env_to_module.MeanStdFilter``                   ``rlconf.connectors``
``ray.rllib.examples.envs.classes.multi_agent.MultiAgentCartPole``     ``runtime.example_envs``
``ray.rllib.examples.envs.classes.stateless_cartpole``                 ``runtime.example_envs``
``ray.tune.registry.register_env``                                     ``runtime``
=====================================================================  ==========================
"""
