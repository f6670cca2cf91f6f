"""The settings of RLlib's rllib/tuned_examples/ppo/stateless_cartpole_ppo.py (Ray 2.40 and
later): PPO with an LSTM on CartPole without its velocities, observations normalised by a
running mean and standard deviation, stopped at a mean return of 350."""

from rlconf import DefaultModelConfig, PPOConfig
from rlconf.connectors import MeanStdFilter
from rlconf.testing import add_rllib_example_script_args, run_rllib_example_script_experiment
from runtime.example_envs import StatelessCartPole

parser = add_rllib_example_script_args(default_reward=350.0, default_timesteps=2_000_000)
parser.set_defaults(num_env_runners=3)
args = parser.parse_args()

network = DefaultModelConfig(use_lstm=True, max_seq_len=20, vf_share_layers=False)
config = (
    PPOConfig()
    .environment(StatelessCartPole)
    .env_runners(env_to_module_connector=lambda env, spaces, device: MeanStdFilter())
    .training(lr=3e-4 * (args.num_learners or 1) ** 0.5, num_epochs=6, vf_loss_coeff=0.05)
    .rl_module(model_config=network)
)

if __name__ == "__main__":
    run_rllib_example_script_experiment(config, args)
