package engine

// metricsServer serves Prometheus metrics on metrics-port (see the observability work).
type metricsServer struct{}

func (s *Server) startMetrics() error { return nil }
func (s *Server) stopMetrics()        {}
