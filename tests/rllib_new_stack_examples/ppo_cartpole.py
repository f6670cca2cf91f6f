"""The settings of RLlib's rllib/tuned_examples/ppo/cartpole_ppo.py (Ray 2.40 and later):
PPO on CartPole-v1 with a one-layer linear network, stopped at a mean return of 450."""

from rlconf import DefaultModelConfig, PPOConfig
from rlconf.testing import add_rllib_example_script_args, run_rllib_example_script_experiment

args = add_rllib_example_script_args(default_reward=450.0, default_timesteps=300_000).parse_args()

network = DefaultModelConfig(fcnet_hiddens=[32], fcnet_activation="linear", vf_share_layers=True)
config = (
    PPOConfig()
    .environment("CartPole-v1")
    .training(lr=3e-4, num_epochs=6, vf_loss_coeff=0.01)
    .rl_module(model_config=network)
)

if __name__ == "__main__":
    run_rllib_example_script_experiment(config, args)
