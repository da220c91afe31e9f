"""The role processes of a parallel run: the learner (:mod:`~ding.parallel.roles.learner`), the collectors
(:mod:`~ding.parallel.roles.collector`) and a learner group (:mod:`~ding.parallel.roles.learner_group`); what they share
(:mod:`~ding.parallel.roles.role`)."""
