"""The decision core, pure and without storage: a definition compiled to a program, the
snapshot it reads and the plan it returns."""
