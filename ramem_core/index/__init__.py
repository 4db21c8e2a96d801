"""The in-memory read model of a namespace, built from the store and kept fresh.

- :mod:`.text`: the tokenizer and weighted term counts.
- :mod:`.bm25`: lexical BM25 with appends and removals.
- :mod:`.episodic`: the episodic keys memories are found by (neighbour turns, session
  documents, dense windows, speakers).
- :mod:`.snapshot`: one namespace's memories, vectors, episodic arrays and index.
- :mod:`.files`: snapshot files, so a restart need not rebuild from the store.
- :mod:`.freshness`: :class:`~.freshness.Freshness`, the one owner of writes and freshness:
  every write goes through it (store first, then the snapshot) and every read takes its
  snapshot from it.

Nothing here imports a stage of the method or the facade; it reads the store through the
:class:`~ramem_core.protocols.Store` protocol.
"""
