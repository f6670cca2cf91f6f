"""Experience collection: rollout workers, worker sets, the step loop over sub-envs, episodes,
envs and their registry, observation preprocessors and filters."""
