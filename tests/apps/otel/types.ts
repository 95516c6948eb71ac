// The types of stormguard/otel beside @opentelemetry/api's (`tsc` in this app, strict).
import { metrics, trace } from '@opentelemetry/api';
import { createClient } from 'stormguard';
import { instrument, safeUrl } from 'stormguard/otel';

export async function setUp(): Promise<() => void> {
  const client = await createClient({ baseUrl: 'https://api.example.com' });
  const undo: () => void = instrument(client, { tracer: trace.getTracer('app'), meter: metrics.getMeter('app') });
  instrument(client)();
  const full: string | undefined = safeUrl('https://u:p@api.example.com/x?q=1');
  void full;
  // @ts-expect-error a tracer, not a string
  instrument(client, { tracer: 'app' });
  return undo;
}
