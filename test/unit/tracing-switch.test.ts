import { expect } from 'chai';
import { tracingRequested } from '../../src/platform/telemetry/tracing';

describe('tracing: off unless the OTEL_* variables ask for it', () => {
  it('is off with no variables, and with only unrelated ones', () => {
    expect(tracingRequested({})).to.equal(false);
    expect(tracingRequested({ OTEL_SERVICE_NAME: 'weft', OTEL_EXPORTER_OTLP_ENDPOINT: '  ' })).to.equal(false);
  });

  it('is on with an OTLP endpoint (general or for traces) or OTEL_TRACES_EXPORTER=otlp', () => {
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).to.equal(true);
    expect(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' })).to.equal(true);
    expect(tracingRequested({ OTEL_TRACES_EXPORTER: 'console, OTLP' })).to.equal(true);
  });

  it('OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none win over an endpoint', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(tracingRequested({ ...endpoint, OTEL_SDK_DISABLED: 'TRUE' })).to.equal(false);
    expect(tracingRequested({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).to.equal(false);
    expect(tracingRequested({ ...endpoint, OTEL_SDK_DISABLED: 'false' })).to.equal(true);
  });
});
