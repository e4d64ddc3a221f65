"""What a checkable model provides: the one interface the explorer and the renderer rely on.

:class:`CheckableModel` is a :class:`typing.Protocol`, as Stateright's ``Model`` trait is a trait: the
states and actions (``initial``, ``successors``, ``apply``), what liveness and deadlock read
(``num_requests``, ``view``, ``is_live``, ``is_quiescent``), an optional symmetry reduction, and the
presentation hooks the pictures and counterexamples print (``describe``, ``label``, ``changes``,
``title``, ``state_names``). :class:`~flightcheck.spec.model.FlightSpec` and every design variant
satisfy it; so do the toy models the tests check the checker with, usually by subclassing
:class:`GenericModel`, which supplies plain defaults for the presentation hooks.

For example::

    >>> from flightcheck.spec.actions import ENGINE_ACTIONS, Action
    >>> class Counter(GenericModel):
    ...     num_requests = 1
    ...     def initial(self):
    ...         return (0,)
    ...     def successors(self, s):
    ...         return [(Action("prefill", 0), (s[0] + 1,))] if s[0] < 2 else []
    ...     def is_live(self, view, i):
    ...         return view[0] < 2
    >>> isinstance(Counter(), CheckableModel)
    True
    >>> Counter().apply((0,), Action("prefill", 0))
    (1,)
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from flightcheck.spec.actions import ENGINE_ACTIONS, Action


@runtime_checkable
class CheckableModel(Protocol):
    """A transition system the explorer can check and the renderer can draw."""

    num_requests: int

    def initial(self) -> Any:
        """The initial state (hashable)."""

    def successors(self, state: Any) -> list[tuple[Action, Any]]:
        """Every enabled action and its successor, in a fixed, deterministic order."""

    def apply(self, state: Any, action: Action) -> Any:
        """The successor of ``state`` under ``action`` (which must be enabled)."""

    def view(self, state: Any) -> Any:
        """What ``is_live`` and ``is_quiescent`` read (the state itself for simple models)."""

    def is_live(self, view: Any, i: int) -> Any:
        """Request ``i`` has arrived and not terminated: liveness and deadlock are about these."""

    def is_quiescent(self, view: Any) -> Any:
        """Nothing in flight: drawn with a double border."""

    def is_engine(self, action: Action) -> bool:
        """The model's own steps, to which weak fairness applies (the rest is its environment)."""

    def is_progress(self, action: Action) -> bool:
        """Steps that move a live request on: a live state with none enabled is a deadlock."""

    def symmetry(self) -> Any:
        """A symmetry reduction (``canonical(state) -> (representative, perm)``, ``rename_action``,
        ``inverse``) or None when requests are not interchangeable."""

    def describe(self, state: Any) -> dict[str, Any]:
        """A readable dictionary of ``state`` (shown when a state is clicked in the HTML page)."""

    def label(self, state: Any) -> str:
        """A compact multi-line label of ``state`` for graph nodes."""

    def changes(self, before: Any, after: Any) -> str:
        """What one step changed, for numbered counterexamples."""

    def title(self) -> str:
        """One line naming the model (scenario, policy, variant), for picture titles."""

    def state_names(self) -> list[str]:
        """A name for each component of a state: two models share a picture only when these agree."""


class GenericModel:
    """Plain defaults for :class:`CheckableModel`'s optional parts; subclasses give the transitions.

    ``apply`` looks the action up among ``successors``; states are drawn as their ``repr``; nothing is
    interchangeable and nothing is quiescent unless a subclass says so.
    """

    num_requests = 0

    def apply(self, state: Any, action: Action) -> Any:
        """The successor of ``state`` under ``action``, found among :meth:`successors`."""
        for a, t in self.successors(state):
            if a == action:
                return t
        raise ValueError(f"{action} is not enabled in {state!r}")

    def view(self, state: Any) -> Any:
        """The state itself."""
        return state

    def is_quiescent(self, view: Any) -> bool:
        """No request is live."""
        return not any(self.is_live(view, i) for i in range(self.num_requests))

    def is_engine(self, action: Action) -> bool:
        """By name: the spec's engine actions (:data:`flightcheck.spec.actions.ENGINE_ACTIONS`)."""
        return action.name in ENGINE_ACTIONS

    def is_progress(self, action: Action) -> bool:
        """By name, as :meth:`is_engine`."""
        return self.is_engine(action)

    def symmetry(self) -> None:
        """No symmetry reduction."""
        return None

    def describe(self, state: Any) -> dict[str, Any]:
        """``{"state": repr(state)}``."""
        return {"state": repr(state)}

    def label(self, state: Any) -> str:
        """``str(state)``."""
        return str(state)

    def changes(self, before: Any, after: Any) -> str:
        """The new state, as text."""
        return f"-> {after!r}"

    def title(self) -> str:
        """The class name."""
        return type(self).__name__

    def state_names(self) -> list[str]:
        """Anonymous components."""
        return []
