"""The thin port between the model and a real cluster (an edge: the core never imports it).

* :mod:`~kueue_provreq.cluster.resources` -- where each kind lives on the API server;
* :mod:`~kueue_provreq.cluster.client` -- the Kubernetes client (the optional ``cluster``
  extra, imported only when a cluster is asked for) behind a small, typed surface;
* :mod:`~kueue_provreq.cluster.snapshot` -- reading the objects the model uses, read-only;
* :mod:`~kueue_provreq.cluster.apply` -- a reconcile's effects as API calls;
* :mod:`~kueue_provreq.cluster.autoscaler` -- a stand-in for Cluster Autoscaler that answers
  ProvisioningRequests on a test cluster;
* :mod:`~kueue_provreq.cluster.record` -- a live cluster's trace (``kueue-provreq record``).

Importing this package imports no client: ``kueue-provreq explain -f`` starts as fast
without the extra as with it.
"""
