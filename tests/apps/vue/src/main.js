import { createApp } from 'vue';
import App from './App.vue';
import LayoutPage from './LayoutPage.vue';
import './style.css';

// ?recipe=URL: the README's Vue recipe (LayoutPage.vue, as written) loading URL.
const recipe = new URLSearchParams(location.search).get('recipe');
if (recipe) createApp(LayoutPage, { url: recipe }).mount('#app');
else createApp(App).mount('#app');
