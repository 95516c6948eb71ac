// A static server component, prerendered at build time: importing the
// module-scope client must not log an unhandled rejection there.
import { api } from '../../lib/api.js';

export default async function About() {
  const client = api;
  return <p data-testid="about">requests so far: {client.stats().requests}</p>;
}
