"""A run as one self-contained HTML page: the case file to look at and to share.

:func:`render_run` gives the page of a run: its header (agent, ids, models,
duration, tokens, verdict), the replay-kit checklist with what is missing,
the fingerprint, the steps as a tree on the run's time axis, each step's
messages, tools, parameters, arguments and results, errors and snapshots,
and the anomalies ``check`` finds, each linked to its step.  Styles and the
little script it has are inline: it needs no network, opens from a
``file://`` URL or an e-mail attachment, and reads without JavaScript
(folding is ``<details>``; the script adds expand/collapse-all and a filter).

:func:`render_diff` shows two runs side by side, aligned as ``otel-replay
diff`` aligns them, the first divergent step highlighted and each changed
field as a line diff, the changed words of a changed line marked.
:func:`render_index` lists many runs (the columns of ``ls``, the question asked
and the answer given, sortable and filterable in the page), each linking to its
page beside it.  A collapsed step shows on one line what it was given and gave.

Recorded text is untrusted: the templates escape every value (Jinja2's
autoescaping), no recorded value is put in a script, a style or a URL.
Rendering needs Jinja2 (``pip install 'otel-replay[report]'``).
"""

from __future__ import annotations

from .page import (
    IndexLine,
    ReportUnavailable,
    index_line,
    page_name,
    render_diff,
    render_index,
    render_run,
    require,
    write_run_page,
)

__all__ = [
    "IndexLine",
    "ReportUnavailable",
    "index_line",
    "page_name",
    "render_diff",
    "render_index",
    "render_run",
    "require",
    "write_run_page",
]
