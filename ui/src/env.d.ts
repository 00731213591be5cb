// Style sheets are bundled by Vite.
declare module "*.css";
