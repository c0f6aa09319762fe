"""What each tab shows, as data: panels (uint8 arrays), figures, numbers and sentences.

One module per tab; no gradio here (the tabs in :mod:`vitviz.ui` only place these).
Errors are the library's typed errors and ``ValueError`` with a sentence for people.
"""
