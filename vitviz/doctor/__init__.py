"""The checkpoint doctor: "is my MAE's reconstruction normal?", answered for any checkpoint.

:func:`vitviz.doctor.diagnose.diagnose` reads a checkpoint (or a registry model), names what
is wrong in sentences with their evidence and what to do, and measures the model against its
own random-weight twin, the visible-ring baseline and the embedded ``mae-tiny``. Modules:
:mod:`.report` (findings and the report), :mod:`.sources` (published figures and their
sources), :mod:`.files` (what a file holds, before any model is built), :mod:`.measure`
(measurements of a loaded model and its random-weight twin), :mod:`.case` (what the checks learn
as they go), one module a check (:mod:`.keys`, :mod:`.targets`, :mod:`.preprocessing`,
:mod:`.reconstruction`, :mod:`.training`) and :mod:`.diagnose` (the checks in order, and the report).
"""
