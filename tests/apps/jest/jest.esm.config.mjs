// Jest's native ESM mode (node --experimental-vm-modules): no transform, the
// package's `import` build. The node environment, where Node's fetch is.
export default {
  testEnvironment: 'node',
  transform: {},
  testMatch: ['<rootDir>/esm/**/*.test.mjs'],
};
