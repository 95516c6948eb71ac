// Jest 30 as Create React App set it up: babel-jest, the jsdom environment,
// CommonJS. Nothing here is for stormguard: its `require` build is picked by
// the package's exports. Tests that need a fetch in the DOM environment say
// so with a `@jest-environment jest-fixed-jsdom` docblock (the one line the
// README documents).
module.exports = {
  testEnvironment: 'jsdom',
  testMatch: ['<rootDir>/__tests__/**/*.test.{js,jsx}'],
};
