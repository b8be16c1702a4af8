"""A pythonfmu FMU for the proxy's tests: an oscillator integrated with fixed sub-steps,
built with `pythonfmu build -f Integrator.py`."""

import math

from pythonfmu import Fmi2Causality, Fmi2Slave, Fmi2Variability, Integer, Real


class Integrator(Fmi2Slave):
    author = "peerpipe"
    description = "x'' = -w^2 x - c x', integrated with 20 sub-steps per step"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.w = 2.0
        self.c = 0.1
        self.x = 1.0
        self.v = 0.0
        self.energy = 0.5 * self.w * self.w
        self.steps = 0
        self.register_variable(Real("w", causality=Fmi2Causality.parameter, variability=Fmi2Variability.tunable))
        self.register_variable(Real("c", causality=Fmi2Causality.parameter, variability=Fmi2Variability.tunable))
        self.register_variable(Real("x", causality=Fmi2Causality.output))
        self.register_variable(Real("v", causality=Fmi2Causality.output))
        self.register_variable(Real("energy", causality=Fmi2Causality.output))
        self.register_variable(Integer("steps", causality=Fmi2Causality.output, variability=Fmi2Variability.discrete))

    def do_step(self, current_time, step_size):
        h = step_size / 20
        for _ in range(20):
            a = -self.w * self.w * self.x - self.c * self.v
            self.v += h * a
            self.x += h * self.v
        self.energy = 0.5 * self.v * self.v + 0.5 * self.w * self.w * self.x * self.x
        self.energy += 1e-12 * math.sin(current_time)
        self.steps += 1
        return True
