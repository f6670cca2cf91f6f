"""The settings of RLlib's rllib/tuned_examples/dqn/cartpole_dqn.py (Ray 2.40 and later):
double dueling DQN on CartPole-v1 with prioritized replay, 2-4-step returns and epsilon falling
to 0.02 over 10k env steps, stopped at a mean return of 450."""

from rlconf import DefaultModelConfig, DQNConfig
from rlconf.testing import add_rllib_example_script_args, run_rllib_example_script_experiment

args = add_rllib_example_script_args(default_reward=450.0, default_timesteps=200_000).parse_args()
learners = args.num_learners or 1

network = DefaultModelConfig(
    fcnet_hiddens=[256],
    fcnet_activation="tanh",
    fcnet_bias_initializer="zeros_",
    head_fcnet_hiddens=[256],
    head_fcnet_bias_initializer="zeros_",
)
config = (
    DQNConfig()
    .environment(env="CartPole-v1")
    .training(
        lr=5e-4 * learners**0.5,
        train_batch_size_per_learner=32,
        replay_buffer_config={
            "type": "PrioritizedEpisodeReplayBuffer",
            "capacity": 50_000,
            "alpha": 0.6,
            "beta": 0.4,
        },
        n_step=(2, 5),
        double_q=True,
        dueling=True,
        epsilon=[(0, 1.0), (10_000, 0.02)],
    )
    .rl_module(model_config=network)
)

if __name__ == "__main__":
    run_rllib_example_script_experiment(config, args)
