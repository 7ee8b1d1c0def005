"""Engines that run a release: blocks of top-level units with their own noise streams
(`streams`), the release computed block by block (`blockwise`), and Dask for inputs larger
than one machine (`dask_engine`, imported only when asked for)."""
