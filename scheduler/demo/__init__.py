"""``campaign demo``: every part of the product shown against the embedded sandbox.

:mod:`~scheduler.demo.tour` runs the parts in order; :mod:`~scheduler.demo.channels` the
SMS and voice runs, :mod:`~scheduler.demo.calls` the WhatsApp calls and
:mod:`~scheduler.demo.sender_health` how the engine takes care of a sender in trouble.
"""
