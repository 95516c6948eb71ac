// Types of stormguard/devtools (see README, "A live panel of the engine: stormguard/devtools").
import type { BudgetOptions, Client } from './index.js';

export interface DevtoolsOptions {
  /**
   * The client's `budget` option, as it was created with it (a client does not tell it): the panel
   * estimates the retry budget's window with it. Default: the defaults; `false`: no budget shown.
   */
  budget?: false | BudgetOptions;
}

/**
 * Renders a live panel (plain DOM) of the client's breakers (state, samples, failure rate, time to
 * the next probe), its retry counters (retries, budget denials, amplification) and the retry budget
 * (an estimate of the retries used / allowed in its window), holds (Retry-After,
 * quotas) with their time left, the queue (in flight, queued), and the last calls with their attempts
 * and decisions, into `element` (default: a floating box appended to `document.body`). Updated on every
 * event and every 250 ms. Returns the function that unmounts it.
 */
export function mountDevtools(client: Client, element?: Element, options?: DevtoolsOptions): () => void;
