"""The settings of RLlib's rllib/tuned_examples/appo/cartpole_appo.py (Ray 2.40 and later):
APPO on CartPole-v1 with a circular buffer of 4 batches each trained on twice, stopped at a
mean return of 450."""

from rlconf import APPOConfig, DefaultModelConfig
from rlconf.testing import add_rllib_example_script_args, run_rllib_example_script_experiment

parser = add_rllib_example_script_args(default_reward=450.0, default_timesteps=2_000_000)
parser.set_defaults(enable_new_api_stack=True)
args = parser.parse_args()

batch, batches_in_buffer, passes_per_batch = 500, 4, 2
config = (
    APPOConfig()
    .environment("CartPole-v1")
    .training(
        lr=7.5e-4,
        train_batch_size_per_learner=batch,
        circular_buffer_num_batches_N=batches_in_buffer,
        circular_buffer_iterations_per_batch_K=passes_per_batch,
        # The target network moves once every buffer's worth of trained rows, twice over.
        target_network_update_freq=2 * passes_per_batch * batches_in_buffer * batch,
        vf_loss_coeff=0.01,
        entropy_coeff=0.007,
        grad_clip=30.0,
    )
    .rl_module(model_config=DefaultModelConfig(vf_share_layers=True))
)

if __name__ == "__main__":
    run_rllib_example_script_experiment(config, args)
