"""Acting and learning: models, modules, action distributions, exploration, learners, policies,
postprocessing and sample batches."""
