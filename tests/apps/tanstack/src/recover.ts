// recover.ts
import { QueryClient } from '@tanstack/react-query';
import { isStormguardError } from 'stormguard';

export const queryClient = new QueryClient({
  defaultOptions: {
    queries: {
      retry: (failures, error) => failures < 3 && isStormguardError(error) && error.code === 'CIRCUIT_OPEN',
      retryDelay: (_, error) => (isStormguardError(error) && error.code === 'CIRCUIT_OPEN' ? error.retryInMs : 0),
    },
  },
});
