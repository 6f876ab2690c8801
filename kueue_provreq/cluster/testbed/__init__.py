"""A local control plane with the real Kueue, for tests and for people without Docker.

* :mod:`~kueue_provreq.cluster.testbed.pki` -- the certificates and keys (``cryptography``);
* :mod:`~kueue_provreq.cluster.testbed.processes` -- starting, recognising and stopping programs;
* :mod:`~kueue_provreq.cluster.testbed.controlplane` -- ``up``, ``down``, ``status`` and
  ``restart_kueue``: etcd, kube-apiserver, kube-controller-manager and Kueue on 127.0.0.1, the
  CRDs and webhooks, the kubeconfig;
* the command ``kueue-provreq testbed up|down|status`` is :mod:`kueue_provreq.cli.testbed`.

The programs come from ``make oracle`` (``oracle/README.md``: the Go modules, their versions
and why).
"""
