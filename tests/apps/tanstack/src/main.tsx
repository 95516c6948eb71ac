import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { QueryClientProvider } from '@tanstack/react-query';
import { queryClient } from './api';
import { queryClient as recovering } from './recover';
import { App } from './App';

// ?recover=1: the README's optional QueryClient, which retries CIRCUIT_OPEN after its retryInMs.
const client = new URLSearchParams(location.search).has('recover') ? recovering : queryClient;

const root = document.getElementById('root');
if (!root) throw new Error('no #root in index.html');
createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={client}>
      <App />
    </QueryClientProvider>
  </StrictMode>,
);
