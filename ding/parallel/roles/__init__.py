"""The role processes of a parallel run: the learner, the collectors, a learner group, and what they share."""
