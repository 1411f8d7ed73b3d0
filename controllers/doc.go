// Package controllers holds the iocache reconcilers: CacheInstance (config, StatefulSet, Services,
// PDB, ServiceMonitor, status) and CacheBenchmark (benchmark Jobs and their results). Objects are
// built by pure functions of the spec, kept apart from the code that talks to the API server.
package controllers
