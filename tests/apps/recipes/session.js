// The app's own session module, which the README's auth recipe imports
// (`session.accessToken`, `session.renew()`): here a token the test sets,
// and a renewal that takes 50 ms and counts itself.
export const session = {
  accessToken: 'expired',
  renewals: 0,
  async renew() {
    this.renewals += 1;
    await new Promise((r) => setTimeout(r, 50));
    this.accessToken = 'fresh';
  },
};
