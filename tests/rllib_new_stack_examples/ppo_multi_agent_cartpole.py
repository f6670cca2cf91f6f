"""The settings of RLlib's rllib/tuned_examples/ppo/multi_agent_cartpole_ppo.py (its Ray 2.3x
form, ``model_config_dict``): one PPO policy per agent of a multi-agent CartPole, stopped when
the return summed over the agents averages 400 per agent, or at 300k env steps."""

from rlconf import PPOConfig
from rlconf.metrics import ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN, NUM_ENV_STEPS_SAMPLED_LIFETIME
from rlconf.testing import add_rllib_example_script_args, run_rllib_example_script_experiment
from runtime import register_env
from runtime.example_envs import MultiAgentCartPole

parser = add_rllib_example_script_args()
parser.set_defaults(enable_new_api_stack=True, num_agents=2)
args = parser.parse_args()
agents = args.num_agents or 1

register_env("multi_agent_cartpole", lambda env_config: MultiAgentCartPole(config=env_config))

config = (
    PPOConfig()
    .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
    .environment("multi_agent_cartpole", env_config={"num_agents": args.num_agents})
    .rl_module(
        model_config_dict={
            "fcnet_hiddens": [32],
            "fcnet_activation": "linear",
            "vf_share_layers": True,
        }
    )
    .training(lr=3e-4, num_epochs=6, vf_loss_coeff=0.01)
    .multi_agent(
        policies={f"p{i}" for i in range(args.num_agents)},
        policy_mapping_fn=lambda agent_id, *rest, **kwargs: f"p{agent_id}",
    )
)

stop = {
    NUM_ENV_STEPS_SAMPLED_LIFETIME: 300_000,
    f"{ENV_RUNNER_RESULTS}/{EPISODE_RETURN_MEAN}": 400.0 * agents,
}

if __name__ == "__main__":
    run_rllib_example_script_experiment(config, args, stop=stop)
