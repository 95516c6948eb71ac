import { Layout } from './Layout.js';

export default function ClientPage() {
  return <Layout />;
}
