"""The settings of RLlib's rllib/tuned_examples/sac/pendulum_sac.py (Ray 2.40 and later): SAC
on Pendulum-v1 with its own rates for the actor, the critics and alpha, 2-4-step returns and
prioritized replay, stopped at a mean return of -250."""

from torch import nn

from rlconf import DefaultModelConfig, SACConfig
from rlconf.testing import add_rllib_example_script_args, run_rllib_example_script_experiment

args = add_rllib_example_script_args(default_reward=-250.0, default_timesteps=20_000).parse_args()
scale = (args.num_learners or 1) ** 0.5

network = DefaultModelConfig(
    fcnet_hiddens=[256, 256],
    fcnet_activation="relu",
    fcnet_kernel_initializer=nn.init.xavier_uniform_,
    head_fcnet_hiddens=[],
    head_fcnet_activation=None,
    head_fcnet_kernel_initializer="orthogonal_",
    head_fcnet_kernel_initializer_kwargs={"gain": 0.01},
)
config = (
    SACConfig()
    .environment("Pendulum-v1")
    .training(
        lr=None,  # the three rates below instead
        actor_lr=2e-4 * scale,
        critic_lr=8e-4 * scale,
        alpha_lr=9e-4 * scale,
        initial_alpha=1.001,
        target_entropy="auto",
        n_step=(2, 5),
        tau=0.005,
        target_network_update_freq=1,
        train_batch_size_per_learner=256,
        replay_buffer_config={
            "type": "PrioritizedEpisodeReplayBuffer",
            "capacity": 100_000,
            "alpha": 1.0,
            "beta": 0.0,
        },
        num_steps_sampled_before_learning_starts=256 * (args.num_learners or 1),
    )
    .rl_module(model_config=network)
    .reporting(metrics_num_episodes_for_smoothing=5)
)

if __name__ == "__main__":
    run_rllib_example_script_experiment(config, args)
