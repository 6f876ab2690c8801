"""Typed, immutable models of the Kubernetes objects the admission lifecycle touches."""
