// Package controllers holds the iocache reconcilers: CacheInstance (config, StatefulSet, Services,
// PDB, ServiceMonitor, the Validation and Tuning benchmarks it needs, status) and CacheBenchmark
// (benchmark Jobs, their results, and what they mean for the instance). Objects are built by pure
// functions of the spec, kept apart from the code that talks to the API server.
package controllers
