"""Where the tools read and write: storages, and namespaces that hold several of them.

- ``base``: the storage protocol (read, stat, list, apply), ``MemoryStorage``, stable resource
  ids for files in git history and the one ``Applied`` builder;
- ``workspace``: a ``Workspace`` seen as a storage (keys, versions, pinned reads, review);
- ``mounts``: ``MountedFilesystem``, virtual roots such as ``/workspace`` over storages;
- ``scratch``: one proposal across the branch and the ``work://`` / ``memory://`` refs.
"""
