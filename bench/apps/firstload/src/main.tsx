import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { App } from './App';

// Every module of the bundle has been evaluated (the HTTP client's too) when this runs.
performance.mark('app-start');

// The HTTP client does the retrying (TanStack's own retries would multiply its attempts).
const queryClient = new QueryClient({ defaultOptions: { queries: { retry: false } } });

const root = document.getElementById('root');
if (!root) throw new Error('no #root in index.html');
createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={queryClient}>
      <App />
    </QueryClientProvider>
  </StrictMode>,
);
