"""The small service API under the CLI and the app: plan and run judges, reparse, reports, the live pane.

Layers: ``service`` may use ``domain``, ``store``, ``judge`` and ``stats``; ``cli`` and ``ui`` call it
(and never write SQL themselves).
"""
