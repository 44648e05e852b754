// zod for the test oracle (the former TypeScript validator), from the root devDependencies.
export { z } from 'zod';
