// What the README's Vue recipe (LayoutPage.vue) imports: the page's one client.
export { client } from './client.js';
