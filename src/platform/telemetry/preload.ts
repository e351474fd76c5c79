import { startTracing } from './tracing';

// Imported first by the entrypoint, before anything loads `http` or `pg`, so that the
// instrumentations can patch them. Does nothing unless the OTEL_* variables ask for traces.
startTracing();
