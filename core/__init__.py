"""Shared building blocks every app may use: the registry pattern (:mod:`core.registry`) and the
one refusal type with its HTTP mapping (:mod:`core.refusals`). Imports no other Concord app."""
